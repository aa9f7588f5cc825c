/* core/manager_internal.h - the manager's entries and decisions, shared with the on-disk store (internal). */
#ifndef GCK_MANAGER_INTERNAL_H
#define GCK_MANAGER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/manager.h>

#include "status_internal.h"

/* One entry: the public view plus what only the store fills in. */
typedef struct gck_mentry {
    gck_entry pub;       /* pointers below */
    char **names, **tags;
    size_t tags_cap;
    char **cids;         /* store: content id per name (NULL for the plain manager) */
    char *file;          /* store: data file name in the store directory */
    uint64_t stored_bytes; /* store: size of that file */
    uint64_t step;       /* store: the snapshot's step */
    unsigned *shared;    /* names and cids never change once made: clones share
                            them, counted here (NULL: this entry's alone) */
    char fields_digest[24]; /* store: gck_snapshot_fields_digest of the version; "" when the
                               manifest predates it (not recorded) */
} gck_mentry;

struct gck_manager {
    gck_policy policy;
    gck_mentry **entries; /* ascending version */
    size_t n, cap;
    uint64_t next_version;
};

/* What a save of full_bytes would do under the seed's rules. */
typedef struct gck_plan {
    uint64_t version;
    int is_delta;
    uint64_t base;     /* when is_delta */
    int evict;
    uint64_t evicted;  /* when evict */
} gck_plan;

GCK_INTERNAL void gck_manager_plan(const gck_manager *m, uint64_t full_bytes, gck_plan *p);

/* Carries out a plan (possibly adjusted by the caller): evicts p->evicted if
 * p->evict, appends the entry and sets next_version past p->version. cids
 * may be NULL. On error nothing changed. Entries must be added in ascending
 * version order. */
GCK_INTERNAL gck_status gck_manager_apply(gck_manager *m, const gck_plan *p, const char *const *names,
                                          const char *const *cids, size_t n_names, uint64_t full_bytes,
                                          uint64_t timestamp, const char *const *tags, size_t n_tags,
                                          gck_mentry **added);

/* Deep copy (for changes that must be all-or-nothing). */
GCK_INTERNAL gck_status gck_manager_clone(const gck_manager *m, gck_manager **out);

/* The entry of `version` (mutable) and its index, or NULL. */
GCK_INTERNAL gck_mentry *gck_manager_find(const gck_manager *m, uint64_t version, size_t *index);

/* Adds a tag; 0 on success, else a status (NO_MEMORY). dedup: skip a tag already there. */
GCK_INTERNAL gck_status gck_mentry_add_tag(gck_mentry *e, const char *tag, int dedup);

/* Removes entry i (no eviction rules) and frees it. */
GCK_INTERNAL void gck_manager_remove_at(gck_manager *m, size_t i);

#endif /* GCK_MANAGER_INTERNAL_H */
