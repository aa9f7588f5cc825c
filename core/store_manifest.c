/* core/store_manifest.c - the store's manifest.json: versions, tags, bases, content ids, policy. */
#include "store_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "alloc_internal.h"
#include "io_internal.h"
#include "snapshot_internal.h"

#define GCK_MANIFEST_FORMAT "gradckpt-store"
/* 2: names ".packed.safetensors" files (full versions with coded planes),
 * which readers of 1 do not know; 3: lists hidden bases ("hidden": true),
 * which a reader of 2 would take for retained versions. A manifest is
 * written with the lowest format that has what it names. */
#define GCK_MANIFEST_VERSION 3

/* u64 as a decimal string: JSON numbers are not safe past 2^53 in many readers. */
static json_t *gck_ju64(uint64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    return json_string(b);
}

static int gck_get_u64(json_t *obj, const char *key, uint64_t *out)
{
    return gck_parse_u64(json_string_value(json_object_get(obj, key)), out);
}

int gck_store_data_name_ok(const char *name)
{
    const char *p = name;
    if (*p++ != 'v' || *p < '0' || *p > '9')
        return 0;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p++ != '-' || *p++ != 'g' || *p < '0' || *p > '9')
        return 0;
    while (*p >= '0' && *p <= '9')
        p++;
    return strcmp(p, ".safetensors") == 0 || strcmp(p, ".delta.safetensors") == 0 ||
           strcmp(p, ".packed.safetensors") == 0;
}

int gck_store_packed_name(const char *name)
{
    const size_t n = strlen(name), k = strlen(".packed.safetensors");
    return n > k && strcmp(name + n - k, ".packed.safetensors") == 0;
}

/* One version: the manager's entry e and the store's record r of it. */
static json_t *gck_entry_json(const gck_entry *e, const gck_vrec *r)
{
    json_t *tags = json_array(), *tensors = json_array();
    for (size_t i = 0; tags && i < e->n_tags; i++)
        if (json_array_append_new(tags, json_string(e->tags[i])) != 0)
            json_decref(tags), tags = NULL;
    for (size_t i = 0; tensors && i < e->n_tensor_names; i++)
        if (json_array_append_new(tensors, json_pack("[s,s]", e->tensor_names[i], r->cids[i])) != 0)
            json_decref(tensors), tensors = NULL;
    json_t *o = json_pack("{s:o, s:o, s:o, s:o, s:o, s:s, s:o, s:o}", "version", gck_ju64(e->version), "step",
                          gck_ju64(r->step), "timestamp", gck_ju64(e->timestamp_secs), "full_bytes",
                          gck_ju64(e->full_bytes), "stored_bytes", gck_ju64(r->stored_bytes), "file", r->file,
                          "tags", tags, "tensors", tensors);
    if (o != NULL && e->is_delta && json_object_set_new(o, "delta_from", gck_ju64(e->delta_from)) != 0)
        json_decref(o), o = NULL;
    if (o != NULL && r->hidden && json_object_set_new(o, "hidden", json_true()) != 0)
        json_decref(o), o = NULL;
    /* optional (readers before it ignore it): checked on restore and verify */
    if (o != NULL && r->fields_digest[0] != '\0' &&
        json_object_set_new(o, "fields_digest", json_string(r->fields_digest)) != 0)
        json_decref(o), o = NULL;
    return o;
}

typedef struct gck_text {
    const char *p;
    size_t len;
} gck_text;

static int gck_fill_text(int fd, void *ctx)
{
    const gck_text *t = ctx;
    return gck_write_all(fd, t->p, t->len);
}

/* One version's JSON text, and what it was made from: the fields a
 * committed version can still change (tags, becoming a hidden base; file,
 * size and base are kept for safety) plus its identity. Everything else of a committed version never
 * changes, so equal fields mean the text is still exact. A field that can
 * change after a commit must be added here. */
typedef struct gck_mtext {
    uint64_t version, step, timestamp, full_bytes, stored_bytes, delta_from;
    int is_delta, hidden;
    size_t n_names;
    char *file, *tags; /* tags joined with NUL separators, n_tags of them */
    size_t n_tags, tags_len;
    char *text;        /* compact JSON of the entry */
    int taken;         /* committed text reused by the pending manifest */
} gck_mtext;

struct gck_manifest_cache {
    gck_mtext *v; /* of the last manifest that reached its place */
    size_t n;
};

static void gck_mtexts_free(gck_mtext *v, size_t n, int only_fresh)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        if (!only_fresh || !v[i].taken)
            free(v[i].file), free(v[i].tags), free(v[i].text);
    free(v);
}

gck_manifest_cache *gck_manifest_cache_create(void)
{
    return gck_calloc(1, sizeof(gck_manifest_cache));
}

void gck_manifest_cache_destroy(gck_manifest_cache *c)
{
    if (c != NULL)
        gck_mtexts_free(c->v, c->n, 0);
    free(c);
}

/* The identity and changeable fields of e (text not set); 0 when out of memory. */
static int gck_mtext_key(const gck_entry *e, const gck_vrec *r, gck_mtext *k)
{
    size_t len = 0;
    for (size_t i = 0; i < e->n_tags; i++)
        len += strlen(e->tags[i]) + 1;
    *k = (gck_mtext){.version = e->version, .step = r->step, .timestamp = e->timestamp_secs,
                     .full_bytes = e->full_bytes, .stored_bytes = r->stored_bytes,
                     .delta_from = e->is_delta ? e->delta_from : 0, .is_delta = e->is_delta,
                     .hidden = r->hidden, .n_names = e->n_tensor_names, .n_tags = e->n_tags, .tags_len = len};
    k->file = gck_strdup(r->file);
    k->tags = gck_malloc(len ? len : 1);
    if (k->file == NULL || k->tags == NULL) {
        free(k->file), free(k->tags);
        return 0;
    }
    for (size_t i = 0, at = 0; i < e->n_tags; i++) {
        const size_t l = strlen(e->tags[i]) + 1;
        memcpy(k->tags + at, e->tags[i], l);
        at += l;
    }
    return 1;
}

static int gck_mtext_same(const gck_mtext *a, const gck_mtext *b)
{
    return a->version == b->version && a->step == b->step && a->timestamp == b->timestamp &&
           a->full_bytes == b->full_bytes && a->stored_bytes == b->stored_bytes && a->delta_from == b->delta_from &&
           a->is_delta == b->is_delta && a->hidden == b->hidden && a->n_names == b->n_names && a->n_tags == b->n_tags &&
           a->tags_len == b->tags_len && strcmp(a->file, b->file) == 0 && memcmp(a->tags, b->tags, a->tags_len) == 0;
}

/* The committed text of k's version when nothing of it changed, or NULL. */
static gck_mtext *gck_cache_lookup(gck_manifest_cache *c, const gck_mtext *k)
{
    size_t lo = 0, hi = c ? c->n : 0; /* committed texts are in ascending version */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (c->v[mid].version < k->version)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < (c ? c->n : 0) && gck_mtext_same(&c->v[lo], k) ? &c->v[lo] : NULL;
}

/* The data files' fsyncs, on a helper thread. */
typedef struct gck_sync_job {
    const int *fds;
    size_t n;
    int err;
} gck_sync_job;

static void *gck_sync_run(void *arg)
{
    gck_sync_job *j = arg;
    for (size_t i = 0; i < j->n; i++)
        if (gck_sys_fsync(j->fds[i]) != 0 && !j->err)
            j->err = errno;
    return NULL;
}

/* store_internal.h; in a forked child the files are synced one after the
 * other */
int gck_store_may_thread(void)
{
    static _Atomic long owner;
    long expect = 0;
    const long me = (long)getpid();
    return atomic_compare_exchange_strong(&owner, &expect, me) || expect == me;
}

/* fsyncs fds[0..n) and `also` at once - the data files on a helper thread,
 * `also` on this one - so that their device flushes overlap instead of
 * queueing one after the other; then closes fds (not `also`). A plain
 * thread, not OpenMP: a process that forked after using OpenMP would hang in
 * a parallel region. 0 or the first errno. */
static int gck_sync_together(const int *fds, size_t n, int also)
{
    gck_sync_job job = {fds, n, 0};
    pthread_t helper;
    const int threaded =
        gck_store_may_thread() && n > 0 && pthread_create(&helper, NULL, gck_sync_run, &job) == 0;
    int err = gck_sys_fsync(also) != 0 ? errno : 0;
    if (threaded)
        pthread_join(helper, NULL);
    else
        gck_sync_run(&job); /* no thread to be had: one after the other */
    err = err ? err : job.err;
    for (size_t i = 0; i < n; i++)
        if (gck_sys_close(fds[i]) != 0 && !err)
            err = errno;
    return err;
}

gck_status gck_manifest_write(const char *path, const gck_state *state, uint64_t generation,
                              const gck_store_config *cfg, gck_manifest_cache *cache, const int *sync_fds,
                              size_t n_sync, int *renamed)
{
    if (renamed != NULL)
        *renamed = 0;
    /* Every version as its own compact text, reused from the last committed
     * manifest when unchanged: a save then serializes one new version, not
     * all of them (which for ten versions of a few dozen tensors cost more
     * CPU than the rest of a small save). */
    const gck_manager *m = state->m;
    const size_t nv = state->n; /* the records are of the manager's versions and the hidden bases */
    gck_mtext *texts = gck_calloc(nv ? nv : 1, sizeof *texts);
    int bad = texts == NULL;
    size_t total = 0, made = 0;
    for (size_t i = 0; i < nv && !bad; i++, made++) {
        const gck_vrec *r = state->recs[i];
        const gck_entry *e = gck_state_entry(state, r->version);
        if (!gck_mtext_key(e, r, &texts[i])) {
            bad = 1;
            break;
        }
        gck_mtext *old = gck_cache_lookup(cache, &texts[i]);
        if (old != NULL) {
            free(texts[i].file), free(texts[i].tags);
            texts[i] = *old;
            texts[i].taken = 1; /* borrowed from the committed table */
            old->taken = 1;
        } else {
            json_t *o = gck_entry_json(e, r);
            texts[i].text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
            json_decref(o);
            bad = texts[i].text == NULL;
        }
        total += bad ? 0 : strlen(texts[i].text) + 2;
    }
    const gck_policy *pol = gck_manager_policy(m);
    json_t *policy = json_pack("{s:o, s:o, s:o}", "max_checkpoints", gck_ju64(pol->max_checkpoints),
                               "keep_every_n", gck_ju64(pol->keep_every_n), "delta_threshold_bytes",
                               gck_ju64(pol->delta_threshold_bytes));
    int fv = 1;
    for (size_t i = 0; i < nv; i++) {
        if (gck_store_packed_name(state->recs[i]->file) && fv < 2)
            fv = 2;
        if (state->recs[i]->hidden)
            fv = 3;
    }
    json_t *root = json_pack("{s:s, s:i, s:o, s:o, s:i, s:f, s:s, s:b, s:i, s:o, s:o}", "format", GCK_MANIFEST_FORMAT,
                             "format_version", fv, "generation", gck_ju64(generation), "next_version",
                             gck_ju64(gck_manager_next_version(m)), "zstd_level", cfg->zstd_level, "zstd_max_entropy",
                             cfg->zstd_max_entropy, "coder", cfg->coder == GCK_STORE_CODER_ZSTD ? "zstd" : "auto",
                             "compress_full", cfg->compress_full, "async_threads", cfg->async_threads, "policy",
                             policy, "versions", json_array());
    char *head = root && !bad ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    /* the versions go into the empty array that ends the top-level object */
    const size_t hl = head ? strlen(head) : 0;
    char *js = head && hl >= 3 && strcmp(head + hl - 3, "[]}") == 0 ? gck_malloc(hl + total + 8) : NULL;
    if (js != NULL) {
        size_t at = hl - 2;
        memcpy(js, head, at);
        for (size_t i = 0; i < nv; i++) {
            js[at++] = '\n';
            const size_t l = strlen(texts[i].text);
            memcpy(js + at, texts[i].text, l);
            at += l;
            if (i + 1 < nv)
                js[at++] = ',';
        }
        memcpy(js + at, "\n]}\n", 5);
    }
    free(head);
    gck_status st = GCK_OK;
    gck_pending pd;
    int fds_closed = 0; /* by gck_sync_together */
    if (js == NULL) {
        st = gck_fail_oom("store manifest text", hl + total + 8);
        goto done;
    }
    gck_text t = {js, strlen(js)};
    if ((st = gck_pending_open(path, gck_fill_text, &t, &pd)) != GCK_OK)
        goto done;
    /* the files it names, and itself, durable before the rename */
    const int err = gck_sync_together(sync_fds, n_sync, pd.fd);
    fds_closed = 1;
    int in_place = 0;
    st = gck_pending_commit(&pd, err, &in_place);
    if (renamed != NULL)
        *renamed = in_place;
    if (in_place && cache != NULL) { /* this manifest is the committed one now: its texts replace the old */
        for (size_t i = 0; i < cache->n; i++)
            if (!cache->v[i].taken)
                free(cache->v[i].file), free(cache->v[i].tags), free(cache->v[i].text);
        free(cache->v);
        for (size_t i = 0; i < nv; i++)
            texts[i].taken = 0;
        cache->v = texts, cache->n = nv;
        texts = NULL;
    }
done:
    for (size_t i = 0; !fds_closed && i < n_sync; i++)
        close(sync_fds[i]); /* nothing was written: closed unsynced */
    free(js);
    if (texts != NULL) { /* not committed: drop the new texts, give the borrowed back */
        gck_mtexts_free(texts, made, 1);
        for (size_t i = 0; cache != NULL && i < cache->n; i++)
            cache->v[i].taken = 0;
    }
    return st;
}

/* ---- read ------------------------------------------------------------------------ */

static gck_status gck_bad(const char *path, const char *what)
{
    return gck_fail(GCK_ERR_CORRUPT, "store manifest '%.300s': %s", path, what);
}

/* 1 for "xxh3:" and 16 lowercase hex digits (as gck_snapshot_fields_digest writes). */
static int gck_digest_ok(const char *d)
{
    if (d == NULL || strlen(d) != 21 || strncmp(d, "xxh3:", 5) != 0)
        return 0;
    for (const char *p = d + 5; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

/* Adds one manifest entry to the state (its manager's entry and its record). */
static gck_status gck_read_entry(const char *path, json_t *o, gck_state *state)
{
    gck_manager *m = state->m;
    const uint64_t last = state->n > 0 ? state->recs[state->n - 1]->version : 0;
    uint64_t version, step, ts, full, stored, base = 0;
    json_t *tags = json_object_get(o, "tags"), *tensors = json_object_get(o, "tensors");
    const char *file = json_string_value(json_object_get(o, "file"));
    if (!gck_get_u64(o, "version", &version) || !gck_get_u64(o, "step", &step) || !gck_get_u64(o, "timestamp", &ts) ||
        !gck_get_u64(o, "full_bytes", &full) || !gck_get_u64(o, "stored_bytes", &stored) || !json_is_array(tags) ||
        !json_is_array(tensors) || file == NULL)
        return gck_bad(path, "a version lacks a field");
    if (!gck_store_data_name_ok(file))
        return gck_bad(path, "a version names a file that is not a store data file");
    json_t *jdigest = json_object_get(o, "fields_digest");
    const char *digest = json_string_value(jdigest);
    if (jdigest != NULL && !gck_digest_ok(digest))
        return gck_bad(path, "a version's fields_digest is not \"xxh3:\" and 16 hex digits");
    const int is_delta = json_object_get(o, "delta_from") != NULL;
    if (is_delta && !gck_get_u64(o, "delta_from", &base))
        return gck_bad(path, "bad delta_from");
    json_t *jhidden = json_object_get(o, "hidden");
    if (jhidden != NULL && !json_is_boolean(jhidden))
        return gck_bad(path, "a version's hidden is not true or false");
    const int hidden = json_is_true(jhidden);
    if (hidden && json_array_size(tags) > 0)
        return gck_bad(path, "a hidden base has tags");
    if (version == 0 || version <= last)
        return gck_bad(path, "versions are not in ascending order");
    if (is_delta && (base >= version || gck_state_rec(state, base) == NULL))
        return gck_bad(path, "a delta's base is not a retained earlier version or hidden base");
    const size_t nt = json_array_size(tags), nn = json_array_size(tensors);
    const char **tv = gck_calloc(nt + 1, sizeof *tv), **nv = gck_calloc(nn + 1, sizeof *nv),
               **cv = gck_calloc(nn + 1, sizeof *cv);
    gck_status st = GCK_OK;
    if (tv == NULL || nv == NULL || cv == NULL) {
        st = gck_fail_oom("store manifest entry", (nt + 2 * nn + 3) * sizeof *tv);
        goto done;
    }
    for (size_t i = 0; i < nt; i++)
        if ((tv[i] = json_string_value(json_array_get(tags, i))) == NULL) {
            st = gck_bad(path, "a tag is not a string");
            goto done;
        }
    for (size_t i = 0; i < nn; i++) {
        json_t *pair = json_array_get(tensors, i);
        nv[i] = json_string_value(json_array_get(pair, 0));
        cv[i] = json_string_value(json_array_get(pair, 1));
        if (json_array_size(pair) != 2 || nv[i] == NULL || cv[i] == NULL) {
            st = gck_bad(path, "a tensor entry is not [name, content id]");
            goto done;
        }
    }
    gck_vrec *r = gck_vrec_new(version, step, stored, file, cv, nn, digest);
    if (r == NULL) {
        st = GCK_ERR_NO_MEMORY;
        goto done;
    }
    if (hidden) { /* no manager entry: the record keeps it */
        const gck_entry e = {.version = version, .timestamp_secs = ts, .full_bytes = full, .is_delta = is_delta,
                             .delta_from = base, .tensor_names = nv, .n_tensor_names = nn};
        gck_vrec *h = gck_vrec_hidden(r, &e);
        gck_vrec_release(r);
        st = h != NULL ? gck_state_put(state, h) : GCK_ERR_NO_MEMORY;
        goto done;
    }
    /* the record first: a failed apply leaves no entry without one */
    if ((st = gck_state_put(state, r)) != GCK_OK)
        goto done;
    const gck_plan p = {.version = version, .is_delta = is_delta, .base = base};
    st = gck_manager_apply(m, &p, nv, nn, full, ts, tv, nt);
done:
    free(tv), free(nv), free(cv);
    return st;
}

gck_status gck_manifest_read(const char *path, gck_state *out, uint64_t *generation, gck_store_config *cfg)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (errno == ENOENT)
            return gck_fail(GCK_ERR_NOT_FOUND, "no store manifest '%.300s'", path);
        return gck_io_fail("cannot open", path, errno);
    }
    json_error_t jerr;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    const int read_err = ferror(f);
    fclose(f);
    if (root == NULL)
        return read_err ? gck_io_fail("cannot read", path, EIO)
                        : gck_fail(GCK_ERR_CORRUPT, "store manifest '%.300s': %s (line %d)", path, jerr.text,
                                   jerr.line);
    gck_status st = GCK_OK;
    const char *fmt = json_string_value(json_object_get(root, "format"));
    json_t *fv = json_object_get(root, "format_version"), *jl = json_object_get(root, "zstd_level");
    json_t *je = json_object_get(root, "zstd_max_entropy");
    /* optional (manifests before them: zstd for every coded plane, plain full versions) */
    json_t *jc = json_object_get(root, "coder"), *jf = json_object_get(root, "compress_full"),
           *ja = json_object_get(root, "async_threads");
    const char *coder = jc ? json_string_value(jc) : "zstd";
    json_t *policy = json_object_get(root, "policy"), *versions = json_object_get(root, "versions");
    uint64_t gen = 0, next = 0, maxc = 0;
    gck_policy p;
    if (fmt == NULL || strcmp(fmt, GCK_MANIFEST_FORMAT) != 0 || !json_is_integer(fv))
        st = gck_bad(path, "not a gradckpt store manifest");
    else if (json_integer_value(fv) > GCK_MANIFEST_VERSION)
        st = gck_fail(GCK_ERR_UNSUPPORTED, "store manifest '%.300s' has format %lld; this build reads up to %d", path,
                      (long long)json_integer_value(fv), GCK_MANIFEST_VERSION);
    else if (!gck_get_u64(root, "generation", &gen) || !gck_get_u64(root, "next_version", &next) ||
             !json_is_integer(jl) || json_integer_value(jl) < -7 || json_integer_value(jl) > 22 ||
             !json_is_number(je) || !(json_number_value(je) > 0.0 && json_number_value(je) <= 1.0) ||
             !json_is_array(versions) || !gck_get_u64(policy, "max_checkpoints", &maxc) ||
             !gck_get_u64(policy, "keep_every_n", &p.keep_every_n) ||
             !gck_get_u64(policy, "delta_threshold_bytes", &p.delta_threshold_bytes) || maxc > SIZE_MAX)
        st = gck_bad(path, "missing or bad top-level field");
    else if (coder == NULL || (strcmp(coder, "auto") != 0 && strcmp(coder, "zstd") != 0) ||
             (jf != NULL && !json_is_boolean(jf)) ||
             (ja != NULL && (!json_is_integer(ja) || json_integer_value(ja) < 0 || json_integer_value(ja) > 1024)))
        st = gck_bad(path, "bad coder, compress_full or async_threads");
    gck_state state = {0};
    if (st != GCK_OK)
        goto done;
    p.max_checkpoints = (size_t)maxc;
    if ((st = gck_manager_create(&p, &state.m)) != GCK_OK)
        goto done;
    for (size_t i = 0; i < json_array_size(versions); i++)
        if ((st = gck_read_entry(path, json_array_get(versions, i), &state)) != GCK_OK)
            goto done;
    if (state.n > 0 && next <= state.recs[state.n - 1]->version) {
        st = gck_bad(path, "next_version is not past the last version");
        goto done;
    }
    if (next == 0) {
        st = gck_bad(path, "next_version is 0");
        goto done;
    }
    gck_manager_set_next_version(state.m, next);
    *out = state;
    state = (gck_state){0};
    *generation = gen;
    cfg->policy = p;
    cfg->zstd_level = (int)json_integer_value(jl);
    cfg->zstd_max_entropy = json_number_value(je);
    cfg->coder = strcmp(coder, "auto") == 0 ? GCK_STORE_CODER_AUTO : GCK_STORE_CODER_ZSTD;
    cfg->compress_full = json_is_true(jf);
    cfg->async_threads = ja ? (int)json_integer_value(ja) : 1;
done:
    gck_state_clear(&state);
    json_decref(root);
    return st;
}
