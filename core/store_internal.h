/* core/store_internal.h - the store's manifest file (internal). */
#ifndef GCK_STORE_INTERNAL_H
#define GCK_STORE_INTERNAL_H

#include <stdint.h>

#include <gradckpt/store.h>

#include "manager_internal.h"

#define GCK_MANIFEST_NAME "manifest.json"

/* The JSON text of each version of the last manifest written, reused by the
 * next write for the versions that did not change (most of them). */
typedef struct gck_manifest_cache gck_manifest_cache;
GCK_INTERNAL gck_manifest_cache *gck_manifest_cache_create(void); /* NULL: out of memory */
GCK_INTERNAL void gck_manifest_cache_destroy(gck_manifest_cache *c);

/* Writes the manifest (entries with their files, sizes, steps, content ids;
 * policy (from m), zstd settings (from cfg), generation) to path as
 * gck_write_atomic does; *renamed as there (the new manifest is in place even
 * if the status is an error). cache (may be NULL) supplies unchanged
 * versions' texts and, once the manifest is in place, keeps this one's.
 * sync_fds (n_sync open files: the data files the manifest names) are
 * fsynced together with the manifest's temporary before the rename, and
 * closed in every case; any of those fsyncs failing fails the write. */
GCK_INTERNAL gck_status gck_manifest_write(const char *path, const gck_manager *m, uint64_t generation,
                                           const gck_store_config *cfg, gck_manifest_cache *cache,
                                           const int *sync_fds, size_t n_sync, int *renamed);

/* Reads and validates a manifest: GCK_ERR_NOT_FOUND when there is no file,
 * GCK_ERR_CORRUPT naming the rule that failed, GCK_ERR_UNSUPPORTED for a
 * newer format. */
GCK_INTERNAL gck_status gck_manifest_read(const char *path, gck_manager **m_out, uint64_t *generation,
                                          gck_store_config *cfg);

/* 1 when name is a file name the store could have written (a data file
 * "v<digits>-g<digits>[.delta|.packed].safetensors") - never a path. */
GCK_INTERNAL int gck_store_data_name_ok(const char *name);
/* 1 for a full version's data file with coded planes (".packed.safetensors"). */
GCK_INTERNAL int gck_store_packed_name(const char *name);

#endif /* GCK_STORE_INTERNAL_H */
