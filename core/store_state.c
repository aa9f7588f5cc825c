/* core/store_state.c - the store's per-version records and the states that pair them with the manager. */
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"

gck_vrec *gck_vrec_new(uint64_t version, uint64_t step, uint64_t stored_bytes, const char *file,
                       const char *const *cids, size_t n_cids, const char *digest)
{
    gck_vrec *r = gck_calloc(1, sizeof *r);
    if (r == NULL) {
        gck_fail_oom("store version record", sizeof *r);
        return NULL;
    }
    *r = (gck_vrec){.version = version, .step = step, .stored_bytes = stored_bytes, .n_cids = n_cids, .refs = 1};
    snprintf(r->fields_digest, sizeof r->fields_digest, "%s", digest ? digest : "");
    r->file = gck_strdup(file ? file : "");
    r->cids = gck_calloc(n_cids ? n_cids : 1, sizeof *r->cids);
    int ok = r->file != NULL && r->cids != NULL;
    for (size_t i = 0; ok && i < n_cids; i++)
        ok = (r->cids[i] = gck_strdup(cids[i])) != NULL;
    if (!ok) {
        gck_vrec_release(r);
        gck_fail_oom("store version record (content ids)", n_cids * sizeof *r->cids);
        return NULL;
    }
    return r;
}

gck_vrec *gck_vrec_hidden(const gck_vrec *r, const gck_entry *e)
{
    gck_vrec *h = gck_vrec_new(r->version, r->step, r->stored_bytes, r->file, (const char *const *)r->cids, r->n_cids,
                               r->fields_digest);
    if (h == NULL)
        return NULL;
    const size_t n = e->n_tensor_names;
    h->hidden = 1;
    h->hpub = (gck_entry){.version = e->version, .timestamp_secs = e->timestamp_secs, .full_bytes = e->full_bytes,
                          .is_delta = e->is_delta, .delta_from = e->is_delta ? e->delta_from : 0,
                          .n_tensor_names = n};
    h->hnames = gck_calloc(n ? n : 1, sizeof *h->hnames);
    int ok = h->hnames != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = (h->hnames[i] = gck_strdup(e->tensor_names[i])) != NULL;
    if (!ok) {
        gck_vrec_release(h);
        gck_fail_oom("store hidden base record (tensor names)", n * sizeof *h->hnames);
        return NULL;
    }
    h->hpub.tensor_names = (const char *const *)h->hnames;
    return h;
}

void gck_vrec_release(gck_vrec *r)
{
    if (r == NULL || --r->refs > 0)
        return;
    for (size_t i = 0; r->hnames != NULL && i < r->hpub.n_tensor_names; i++)
        free(r->hnames[i]);
    free(r->hnames);
    for (size_t i = 0; r->cids != NULL && i < r->n_cids; i++)
        free(r->cids[i]);
    free(r->cids);
    free(r->file);
    free(r);
}

/* Index of the first record with version >= v. */
static size_t gck_state_lower(const gck_state *s, uint64_t v)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (s->recs[mid]->version < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const gck_vrec *gck_state_rec(const gck_state *s, uint64_t version)
{
    const size_t i = gck_state_lower(s, version);
    return i < s->n && s->recs[i]->version == version ? s->recs[i] : NULL;
}

gck_status gck_state_put(gck_state *s, gck_vrec *r)
{
    const size_t i = gck_state_lower(s, r->version);
    if (i < s->n && s->recs[i]->version == r->version) {
        gck_vrec_release(s->recs[i]);
        s->recs[i] = r;
        return GCK_OK;
    }
    if (s->n == s->cap) {
        const size_t nc = s->cap ? 2 * s->cap : 8;
        gck_vrec **nv = gck_realloc(s->recs, nc * sizeof *nv);
        if (nv == NULL) {
            gck_vrec_release(r);
            return gck_fail_oom("store version records", nc * sizeof *nv);
        }
        s->recs = nv, s->cap = nc;
    }
    memmove(&s->recs[i + 1], &s->recs[i], (s->n - i) * sizeof *s->recs);
    s->recs[i] = r;
    s->n++;
    return GCK_OK;
}

const gck_entry *gck_state_entry(const gck_state *s, uint64_t version)
{
    const gck_entry *e = gck_manager_get(s->m, version);
    if (e != NULL)
        return e;
    const gck_vrec *r = gck_state_rec(s, version);
    return r != NULL && r->hidden ? &r->hpub : NULL;
}

void gck_state_prune(gck_state *s)
{
    /* newest first, the kept records gathered at the end: a base is older
     * than its delta, so when a record is reached every record whose chain
     * could read it has been decided */
    size_t k = s->n;
    for (size_t i = s->n; i-- > 0;) {
        gck_vrec *r = s->recs[i];
        int keep = !r->hidden && gck_manager_get(s->m, r->version) != NULL;
        for (size_t j = k; r->hidden && !keep && j < s->n; j++) {
            /* not gck_state_entry: it searches recs, which holds released records between i and k */
            const gck_vrec *dr = s->recs[j];
            const gck_entry *d = dr->hidden ? &dr->hpub : gck_manager_get(s->m, dr->version);
            keep = d != NULL && d->is_delta && d->delta_from == r->version;
        }
        if (keep)
            s->recs[--k] = r;
        else
            gck_vrec_release(r);
    }
    memmove(s->recs, s->recs + k, (s->n - k) * sizeof *s->recs);
    s->n = s->n - k;
}

gck_status gck_state_clone(const gck_state *s, gck_state *out)
{
    gck_state c = {0};
    c.cap = s->n ? s->n : 1;
    c.recs = gck_malloc(c.cap * sizeof *c.recs);
    if (c.recs == NULL)
        return gck_fail_oom("store version records", c.cap * sizeof *c.recs);
    const gck_status st = gck_manager_clone(s->m, &c.m);
    if (st != GCK_OK) {
        free(c.recs);
        return st;
    }
    for (size_t i = 0; i < s->n; i++) {
        c.recs[i] = s->recs[i];
        c.recs[i]->refs++;
    }
    c.n = s->n;
    *out = c;
    return GCK_OK;
}

void gck_state_clear(gck_state *s)
{
    gck_manager_destroy(s->m);
    for (size_t i = 0; i < s->n; i++)
        gck_vrec_release(s->recs[i]);
    free(s->recs);
    *s = (gck_state){0};
}
