/* core/manager_internal.h - the manager's entries and decisions, shared with the on-disk store (internal). */
#ifndef GCK_MANAGER_INTERNAL_H
#define GCK_MANAGER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/manager.h>

#include "status_internal.h"

/* One entry: the public view and the arrays it points at. Only manager.c
 * reads this layout; the store uses the functions below and the public
 * gck_entry, and keeps its own per-version records (store_internal.h). */
typedef struct gck_mentry {
    gck_entry pub;       /* pointers below */
    char **names, **tags;
    size_t tags_cap;
    unsigned *shared;    /* names never change once made: clones share
                            them, counted here (NULL: this entry's alone) */
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
 * p->evict, appends the entry and sets next_version past p->version. On
 * error nothing changed. Entries must be added in ascending version order. */
GCK_INTERNAL gck_status gck_manager_apply(gck_manager *m, const gck_plan *p, const char *const *names,
                                          size_t n_names, uint64_t full_bytes, uint64_t timestamp,
                                          const char *const *tags, size_t n_tags);

/* Deep copy (for changes that must be all-or-nothing). */
GCK_INTERNAL gck_status gck_manager_clone(const gck_manager *m, gck_manager **out);

/* The entry of `version` (mutable) and its index, or NULL. */
GCK_INTERNAL gck_mentry *gck_manager_find(const gck_manager *m, uint64_t version, size_t *index);

/* Adds a tag to `version`'s entry (which must be retained); dedup: skip a
 * tag already there. Errors: GCK_ERR_NO_MEMORY (nothing changed). */
GCK_INTERNAL gck_status gck_manager_add_tag(gck_manager *m, uint64_t version, const char *tag, int dedup);

/* Removes the first `tag` of `version`'s entry; 0 when it has none. */
GCK_INTERNAL int gck_manager_remove_tag(gck_manager *m, uint64_t version, const char *tag);

/* Makes `version` (retained) a delta from base, or full when base is 0 (a rebase). */
GCK_INTERNAL void gck_manager_set_base(gck_manager *m, uint64_t version, uint64_t base);

/* The policy (borrowed) and its replacement. */
GCK_INTERNAL const gck_policy *gck_manager_policy(const gck_manager *m);
GCK_INTERNAL void gck_manager_set_policy(gck_manager *m, const gck_policy *p);

/* Sets the version the next save gets (a manifest's next_version). */
GCK_INTERNAL void gck_manager_set_next_version(gck_manager *m, uint64_t next);

#endif /* GCK_MANAGER_INTERNAL_H */
