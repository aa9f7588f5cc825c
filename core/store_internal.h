/* core/store_internal.h - the store's manifest file (internal). */
#ifndef GCK_STORE_INTERNAL_H
#define GCK_STORE_INTERNAL_H

#include <stdint.h>

#include <gradckpt/store.h>

#include "manager_internal.h"

#define GCK_MANIFEST_NAME "manifest.json"

/* The store's record of one version: its data file and what a rebuild is
 * checked against. The manager holds only the seed's bookkeeping (names,
 * tags, sizes, bases); this is the rest. A record never changes once made
 * (an evicted version kept as a hidden base gets a new one), so states
 * share records, counted. */
typedef struct gck_vrec {
    uint64_t version;
    uint64_t step;          /* the snapshot's step */
    uint64_t stored_bytes;  /* size of the data file */
    char *file;             /* data file name in the store directory */
    char **cids;            /* content id per name of the version's entry, in its order */
    size_t n_cids;
    char fields_digest[24]; /* gck_snapshot_fields_digest; "" when the manifest predates it */
    /* A hidden base: an evicted version (the manager no longer holds it)
     * whose file the chain of a retained version still reads. Its entry is
     * kept here (no tags); a listed version's record has hidden 0. */
    int hidden;
    gck_entry hpub;
    char **hnames;          /* hpub.tensor_names */
    unsigned refs;
} gck_vrec;

/* A state of the store: the manager and the records of the versions it
 * retains and of the hidden bases their chains read (ascending). The committed state is what manifest.json says; a
 * change builds the next one from a clone and switches only once it is
 * committed. */
typedef struct gck_state {
    gck_manager *m;
    gck_vrec **recs;
    size_t n, cap;
} gck_state;

/* A new record (refs 1) with copies of file, cids and digest (NULL: "");
 * NULL when out of memory (the message set). */
GCK_INTERNAL gck_vrec *gck_vrec_new(uint64_t version, uint64_t step, uint64_t stored_bytes, const char *file,
                                    const char *const *cids, size_t n_cids, const char *digest);
/* A hidden base's record: r's data file and ids with e's entry (the
 * version's, as the manager held it; its tags are not kept); NULL when out
 * of memory (the message set). */
GCK_INTERNAL gck_vrec *gck_vrec_hidden(const gck_vrec *r, const gck_entry *e);
/* Drops one reference; the last frees it. NULL is fine. */
GCK_INTERNAL void gck_vrec_release(gck_vrec *r);
/* The record of `version`, or NULL. */
GCK_INTERNAL const gck_vrec *gck_state_rec(const gck_state *s, uint64_t version);
/* Adds r (the state takes its reference, also on error), replacing the
 * record of its version if there is one. */
GCK_INTERNAL gck_status gck_state_put(gck_state *s, gck_vrec *r);
/* The entry of `version`: the manager's for a retained version, the kept
 * one for a hidden base; NULL for neither. */
GCK_INTERNAL const gck_entry *gck_state_entry(const gck_state *s, uint64_t version);
/* Drops the records of versions the manager no longer retains (evicted),
 * except the hidden bases some retained version's chain reads. Allocates
 * nothing (it runs where nothing may fail). */
GCK_INTERNAL void gck_state_prune(gck_state *s);
/* A copy of s in *out: a clone of the manager, the records shared. */
GCK_INTERNAL gck_status gck_state_clone(const gck_state *s, gck_state *out);
/* Frees the manager and releases the records; *s becomes empty. */
GCK_INTERNAL void gck_state_clear(gck_state *s);

/* The JSON text of each version of the last manifest written, reused by the
 * next write for the versions that did not change (most of them). */
typedef struct gck_manifest_cache gck_manifest_cache;
GCK_INTERNAL gck_manifest_cache *gck_manifest_cache_create(void); /* NULL: out of memory */
GCK_INTERNAL void gck_manifest_cache_destroy(gck_manifest_cache *c);

/* 1 in the process that first asked, 0 in a process forked from it. A
 * forked child of a multi-threaded parent (a trainer saving from a child)
 * should not start threads - POSIX allows it only async-signal-safe calls,
 * and qemu-user, which runs the cross-architecture tests, crashes on it - so
 * there the store does on the calling thread what it would hand to one. */
GCK_INTERNAL int gck_store_may_thread(void);

/* Writes the manifest (entries with their files, sizes, steps, content ids;
 * policy (from st's manager), coder settings (from cfg), generation) to path as
 * gck_write_atomic does; *renamed as there (the new manifest is in place even
 * if the status is an error). cache (may be NULL) supplies unchanged
 * versions' texts and, once the manifest is in place, keeps this one's.
 * sync_fds (n_sync open files: the data files the manifest names) are
 * fsynced together with the manifest's temporary before the rename, and
 * closed in every case; any of those fsyncs failing fails the write. */
GCK_INTERNAL gck_status gck_manifest_write(const char *path, const gck_state *st, uint64_t generation,
                                           const gck_store_config *cfg, gck_manifest_cache *cache,
                                           const int *sync_fds, size_t n_sync, int *renamed);

/* Reads and validates a manifest: GCK_ERR_NOT_FOUND when there is no file,
 * GCK_ERR_CORRUPT naming the rule that failed, GCK_ERR_UNSUPPORTED for a
 * newer format. *out (empty before) is filled only on success. */
GCK_INTERNAL gck_status gck_manifest_read(const char *path, gck_state *out, uint64_t *generation,
                                          gck_store_config *cfg);

/* 1 when name is a file name the store could have written (a data file
 * "v<digits>-g<digits>[.delta|.packed].safetensors") - never a path. */
GCK_INTERNAL int gck_store_data_name_ok(const char *name);
/* 1 for a full version's data file with coded planes (".packed.safetensors"). */
GCK_INTERNAL int gck_store_packed_name(const char *name);

#endif /* GCK_STORE_INTERNAL_H */
