/* core/manager.c - the seed's versioned checkpoint bookkeeping (gck_manager). */
#include "manager_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"

void gck_policy_init(gck_policy *p)
{
    if (p != NULL)
        *p = (gck_policy){.max_checkpoints = 10, .keep_every_n = 5, .delta_threshold_bytes = 1048576};
}

static void gck_strv_free(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

static void gck_mentry_free(gck_mentry *e)
{
    if (e == NULL)
        return;
    if (e->shared == NULL || --*e->shared == 0) { /* the last holder of the names */
        gck_strv_free(e->names, e->pub.n_tensor_names);
        free(e->shared);
    }
    gck_strv_free(e->tags, e->pub.n_tags);
    free(e);
}

/* Copies n strings (n may be 0: a 1-slot array so the pointer is never NULL). */
static char **gck_strv_dup(const char *const *v, size_t n, size_t cap)
{
    char **out = gck_calloc(cap > n ? cap : (n ? n : 1), sizeof *out);
    for (size_t i = 0; out != NULL && i < n; i++) {
        out[i] = gck_strdup(v[i]);
        if (out[i] == NULL) {
            gck_strv_free(out, i);
            return NULL;
        }
    }
    return out;
}

/* Points the public view at the owned arrays. */
static void gck_mentry_sync(gck_mentry *e)
{
    e->pub.tensor_names = (const char *const *)e->names;
    e->pub.tags = (const char *const *)e->tags;
}

static gck_mentry *gck_mentry_new(const char *const *names, size_t n_names, const char *const *tags, size_t n_tags)
{
    gck_mentry *e = gck_calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->pub.n_tensor_names = n_names;
    e->pub.n_tags = n_tags;
    e->tags_cap = n_tags ? n_tags : 1;
    e->names = gck_strv_dup(names, n_names, 0);
    e->tags = e->names ? gck_strv_dup(tags, n_tags, 0) : NULL;
    if (e->names == NULL || e->tags == NULL) {
        gck_strv_free(e->names, e->names ? n_names : 0);
        gck_strv_free(e->tags, e->tags ? n_tags : 0);
        free(e);
        return NULL;
    }
    gck_mentry_sync(e);
    return e;
}

gck_status gck_manager_create(const gck_policy *p, gck_manager **out)
{
    GCK_CHECK_ARG(out != NULL, "gck_manager_create: out is NULL");
    gck_manager *m = gck_calloc(1, sizeof *m);
    if (m == NULL)
        return gck_fail_oom("manager", sizeof *m);
    if (p != NULL)
        m->policy = *p;
    else
        gck_policy_init(&m->policy);
    m->next_version = 1;
    *out = m;
    return GCK_OK;
}

void gck_manager_destroy(gck_manager *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n; i++)
        gck_mentry_free(m->entries[i]);
    free(m->entries);
    free(m);
}

/* Index of the oldest entry without tags, or m->n when all are tagged. */
static size_t gck_oldest_untagged(const gck_manager *m)
{
    size_t i = 0;
    while (i < m->n && m->entries[i]->pub.n_tags > 0)
        i++;
    return i;
}

void gck_manager_plan(const gck_manager *m, uint64_t full_bytes, gck_plan *p)
{
    *p = (gck_plan){.version = m->next_version};
    const int full = m->n == 0 || (m->policy.keep_every_n > 0 && p->version % m->policy.keep_every_n == 0) ||
                     full_bytes <= m->policy.delta_threshold_bytes;
    if (!full) {
        p->is_delta = 1;
        p->base = m->entries[m->n - 1]->pub.version;
    }
    if (m->n >= m->policy.max_checkpoints) {
        const size_t i = gck_oldest_untagged(m);
        if (i < m->n) {
            p->evict = 1;
            p->evicted = m->entries[i]->pub.version;
        }
    }
}

gck_mentry *gck_manager_find(const gck_manager *m, uint64_t version, size_t *index)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const uint64_t v = m->entries[mid]->pub.version;
        if (v == version) {
            if (index != NULL)
                *index = mid;
            return m->entries[mid];
        }
        if (v < version)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Removes entry i (no eviction rules) and frees it. */
static void gck_manager_remove_at(gck_manager *m, size_t i)
{
    gck_mentry_free(m->entries[i]);
    memmove(&m->entries[i], &m->entries[i + 1], (m->n - i - 1) * sizeof *m->entries);
    m->n--;
}

gck_status gck_manager_apply(gck_manager *m, const gck_plan *p, const char *const *names, size_t n_names,
                             uint64_t full_bytes, uint64_t timestamp, const char *const *tags, size_t n_tags)
{
    /* everything that can fail first: the entry and room for it */
    if (m->n == m->cap) {
        const size_t ncap = m->cap ? 2 * m->cap : 8;
        gck_mentry **ne = gck_realloc(m->entries, ncap * sizeof *ne);
        if (ne == NULL)
            return gck_fail_oom("manager entries", ncap * sizeof *ne);
        m->entries = ne;
        m->cap = ncap;
    }
    gck_mentry *e = gck_mentry_new(names, n_names, tags, n_tags);
    if (e == NULL)
        return gck_fail_oom("manager entry (names and tags)", (n_names + n_tags) * sizeof(char *));
    e->pub.version = p->version;
    e->pub.timestamp_secs = timestamp;
    e->pub.full_bytes = full_bytes;
    e->pub.is_delta = p->is_delta;
    e->pub.delta_from = p->is_delta ? p->base : 0;
    size_t i;
    if (p->evict && gck_manager_find(m, p->evicted, &i) != NULL)
        gck_manager_remove_at(m, i);
    m->entries[m->n++] = e;
    m->next_version = p->version + 1;
    return GCK_OK;
}

/* NULL-array and NULL-string checks shared by save's names and tags. */
static gck_status gck_check_strv(const char *what, const char *const *v, size_t n)
{
    GCK_CHECK_ARG(v != NULL || n == 0, "gck_manager_save: %s is NULL with a count of %zu", what, n);
    for (size_t i = 0; i < n; i++)
        GCK_CHECK_ARG(v[i] != NULL, "gck_manager_save: %s[%zu] is NULL", what, i);
    return GCK_OK;
}

gck_status gck_manager_save(gck_manager *m, const char *const *tensor_names, size_t n_names,
                            uint64_t full_bytes, uint64_t timestamp_secs, const char *const *tags, size_t n_tags,
                            uint64_t *version_out)
{
    GCK_CHECK_ARG(m != NULL, "gck_manager_save: manager is NULL");
    GCK_TRY(gck_check_strv("tensor_names", tensor_names, n_names));
    GCK_TRY(gck_check_strv("tags", tags, n_tags));
    gck_plan p;
    gck_manager_plan(m, full_bytes, &p);
    GCK_TRY(gck_manager_apply(m, &p, tensor_names, n_names, full_bytes, timestamp_secs, tags, n_tags));
    if (version_out != NULL)
        *version_out = p.version;
    return GCK_OK;
}

const gck_entry *gck_manager_get(const gck_manager *m, uint64_t version)
{
    const gck_mentry *e = m != NULL ? gck_manager_find(m, version, NULL) : NULL;
    return e != NULL ? &e->pub : NULL;
}

const gck_entry *gck_manager_latest(const gck_manager *m)
{
    return m != NULL && m->n > 0 ? &m->entries[m->n - 1]->pub : NULL;
}

size_t gck_manager_versions(const gck_manager *m, uint64_t *out, size_t cap)
{
    if (m == NULL)
        return 0;
    for (size_t i = 0; out != NULL && i < m->n && i < cap; i++)
        out[i] = m->entries[i]->pub.version;
    return m->n;
}

uint64_t gck_manager_next_version(const gck_manager *m)
{
    return m != NULL ? m->next_version : 0;
}

static gck_status gck_mentry_add_tag(gck_mentry *e, const char *tag, int dedup)
{
    for (size_t i = 0; dedup && i < e->pub.n_tags; i++)
        if (strcmp(e->tags[i], tag) == 0)
            return GCK_OK;
    if (e->pub.n_tags == e->tags_cap) {
        char **nt = gck_realloc(e->tags, 2 * e->tags_cap * sizeof *nt);
        if (nt == NULL)
            return gck_fail_oom("tags", 2 * e->tags_cap * sizeof *nt);
        e->tags = nt;
        e->tags_cap *= 2;
    }
    char *t = gck_strdup(tag);
    if (t == NULL)
        return gck_fail_oom("tag", strlen(tag) + 1);
    e->tags[e->pub.n_tags++] = t;
    gck_mentry_sync(e);
    return GCK_OK;
}

gck_status gck_manager_add_tag(gck_manager *m, uint64_t version, const char *tag, int dedup)
{
    return gck_mentry_add_tag(gck_manager_find(m, version, NULL), tag, dedup);
}

int gck_manager_remove_tag(gck_manager *m, uint64_t version, const char *tag)
{
    gck_mentry *e = gck_manager_find(m, version, NULL);
    for (size_t i = 0; e != NULL && i < e->pub.n_tags; i++)
        if (strcmp(e->tags[i], tag) == 0) {
            free(e->tags[i]);
            memmove(&e->tags[i], &e->tags[i + 1], (e->pub.n_tags - i - 1) * sizeof *e->tags);
            e->pub.n_tags--;
            return 1;
        }
    return 0;
}

void gck_manager_set_base(gck_manager *m, uint64_t version, uint64_t base)
{
    gck_mentry *e = gck_manager_find(m, version, NULL);
    e->pub.is_delta = base != 0;
    e->pub.delta_from = base;
}

const gck_policy *gck_manager_policy(const gck_manager *m)
{
    return &m->policy;
}

void gck_manager_set_policy(gck_manager *m, const gck_policy *p)
{
    m->policy = *p;
}

void gck_manager_set_next_version(gck_manager *m, uint64_t next)
{
    m->next_version = next;
}

int gck_manager_tag(gck_manager *m, uint64_t version, const char *tag)
{
    if (m == NULL || tag == NULL) {
        gck_fail(GCK_ERR_INVALID_ARGUMENT, "gck_manager_tag: NULL argument");
        return 0;
    }
    gck_mentry *e = gck_manager_find(m, version, NULL);
    if (e == NULL) {
        gck_fail(GCK_ERR_NOT_FOUND, "gck_manager_tag: version %llu is not retained", (unsigned long long)version);
        return 0;
    }
    return gck_mentry_add_tag(e, tag, 0) == GCK_OK;
}

gck_status gck_manager_compute_delta(const gck_manager *m, uint64_t v1, uint64_t v2, gck_delta *out)
{
    GCK_CHECK_ARG(m != NULL && out != NULL, "gck_manager_compute_delta: NULL argument");
    const gck_mentry *a = gck_manager_find(m, v1, NULL), *b = gck_manager_find(m, v2, NULL);
    if (a == NULL || b == NULL)
        return gck_fail(GCK_ERR_NOT_FOUND, "compute_delta: version %llu is not retained",
                        (unsigned long long)(a == NULL ? v1 : v2));
    const size_t nb = b->pub.n_tensor_names;
    char **changed = gck_calloc(nb ? nb : 1, sizeof *changed);
    if (changed == NULL)
        return gck_fail_oom("compute_delta: changed names", (nb ? nb : 1) * sizeof *changed);
    size_t k = 0;
    for (size_t i = 0; i < nb; i++) {
        int present = 0;
        for (size_t j = 0; j < a->pub.n_tensor_names && !present; j++)
            present = strcmp(b->names[i], a->names[j]) == 0;
        if (present)
            continue;
        changed[k] = gck_strdup(b->names[i]);
        if (changed[k++] == NULL) {
            gck_strv_free(changed, k);
            return gck_fail_oom("compute_delta: a changed name", strlen(b->names[i]) + 1);
        }
    }
    *out = (gck_delta){.from_version = v1, .to_version = v2, .changed_tensors = changed, .n_changed = k,
                       .delta_bytes = (uint64_t)((double)b->pub.full_bytes * 0.3)};
    return GCK_OK;
}

void gck_delta_clear(gck_delta *d)
{
    if (d == NULL)
        return;
    gck_strv_free(d->changed_tensors, d->n_changed);
    *d = (gck_delta){0};
}

double gck_delta_compression_ratio(const gck_delta *d, uint64_t full_bytes)
{
    if (d == NULL)
        return 0.0;
    return (double)d->delta_bytes / (double)(full_bytes > 0 ? full_bytes : 1);
}

gck_manager_stats gck_manager_stats_get(const gck_manager *m)
{
    gck_manager_stats s = {0};
    for (size_t i = 0; m != NULL && i < m->n; i++) {
        const gck_entry *e = &m->entries[i]->pub;
        s.total_checkpoints++;
        s.delta_checkpoints += e->is_delta != 0;
        s.full_checkpoints += e->is_delta == 0;
        s.total_bytes += e->full_bytes;
    }
    return s;
}

double gck_manager_stats_delta_ratio(const gck_manager_stats *s)
{
    if (s == NULL)
        return 0.0;
    return (double)s->delta_checkpoints / (double)(s->total_checkpoints > 0 ? s->total_checkpoints : 1);
}

gck_status gck_manager_clone(const gck_manager *m, gck_manager **out)
{
    gck_manager *c = gck_calloc(1, sizeof *c);
    if (c == NULL)
        return gck_fail_oom("manager copy", sizeof *c);
    c->policy = m->policy;
    c->next_version = m->next_version;
    c->cap = m->n ? m->n : 1;
    c->entries = gck_calloc(c->cap, sizeof *c->entries);
    for (size_t i = 0; c->entries != NULL && i < m->n; i++) {
        gck_mentry *s = m->entries[i];
        /* the names are shared, not copied (a store clones its manager on
         * every save); tags can change, so they are */
        if (s->shared == NULL && (s->shared = gck_malloc(sizeof *s->shared)) != NULL)
            *s->shared = 1;
        gck_mentry *e = s->shared ? gck_calloc(1, sizeof *e) : NULL;
        if (e != NULL) {
            e->pub.n_tensor_names = s->pub.n_tensor_names;
            e->pub.n_tags = s->pub.n_tags;
            e->tags_cap = s->pub.n_tags ? s->pub.n_tags : 1;
            e->names = s->names, e->shared = s->shared;
            ++*e->shared;
            e->tags = gck_strv_dup(s->pub.tags, s->pub.n_tags, 0);
            gck_mentry_sync(e);
            if (e->tags == NULL) {
                e->pub.n_tags = e->tags ? e->pub.n_tags : 0;
                gck_mentry_free(e);
                e = NULL;
            }
        }
        if (e == NULL)
            break;
        const gck_entry keep = e->pub;
        e->pub = s->pub;
        e->pub.tensor_names = keep.tensor_names;
        e->pub.tags = keep.tags;
        c->entries[c->n++] = e;
    }
    if (c->entries == NULL || c->n != m->n) {
        gck_manager_destroy(c);
        return gck_fail_oom("manager copy (entries)", m->n * sizeof(gck_mentry));
    }
    *out = c;
    return GCK_OK;
}
