/* core/snapshot_internal.h - the snapshot's storage, shared by the object and its file I/O (internal). */
#ifndef GCK_SNAPSHOT_INTERNAL_H
#define GCK_SNAPSHOT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/snapshot.h>

#include "status_internal.h"

/* Sorted (bytewise by name) array of pointers to structs whose first member
 * is `char *name`. */
typedef struct gck_named_vec {
    void **items;
    size_t n, cap;
} gck_named_vec;

typedef struct gck_snap_tensor {
    char *name;
    gck_dtype dtype;
    int64_t *shape;
    size_t ndim;
    void *data; /* this CPU's byte order */
    size_t nbytes;
    int borrowed; /* data belongs to someone else (gck_checkpoint_save) */
    char cid[24]; /* "xxh3:" + 16 hex + NUL */
} gck_snap_tensor;

typedef struct gck_snap_blob {
    char *name;
    void *data;
    size_t len;
    char cid[24];
} gck_snap_blob;

typedef struct gck_snap_meta {
    char *name;
    char *value;
} gck_snap_meta;

struct gck_snapshot {
    uint64_t step, timestamp;
    char *loss_cid;
    gck_named_vec tensors; /* gck_snap_tensor */
    gck_named_vec blobs;   /* gck_snap_blob */
    gck_named_vec meta;    /* gck_snap_meta, user keys only */
    gck_named_vec sysmeta; /* gck_snap_meta, other "gradckpt." keys (full key),
                              kept through load and save */
    void *map;             /* gck_snapshot_load_mmap: the file, tensors point into it */
    size_t map_len;
};

/* Sets (or replaces) a "gradckpt." key other than the snapshot's own fields
 * (format, step, timestamp, loss_cid, cid.*); key includes the prefix. */
GCK_INTERNAL gck_status gck_snapshot_set_sysmeta(gck_snapshot *s, const char *key, const char *value);
GCK_INTERNAL const char *gck_snapshot_sysmeta(const gck_snapshot *s, const char *key);

/* Index of name, or where to insert it (*found = 0). */
GCK_INTERNAL size_t gck_named_find(const gck_named_vec *v, const char *name, int *found);
/* Makes room for one more item; the only step of an insert that can fail. */
GCK_INTERNAL int gck_named_reserve(gck_named_vec *v);
/* Inserts at `at` after gck_named_reserve succeeded: cannot fail. */
GCK_INTERNAL void gck_named_insert(gck_named_vec *v, size_t at, void *item);

/* "xxh3:%016llx" of XXH3-64 over the little-endian bytes of n values. */
GCK_INTERNAL void gck_content_id(const void *data, size_t n, gck_dtype dtype, char out[24]);

/* Takes ownership of a fully built tensor (name, shape, data already
 * allocated); validates the name against the snapshot. On error nothing is
 * taken. Used by gck_snapshot_add_tensor and by the loader. */
GCK_INTERNAL gck_status gck_snapshot_adopt_tensor(gck_snapshot *s, gck_snap_tensor *t);
GCK_INTERNAL void gck_snap_tensor_free(gck_snap_tensor *t);
/* Same for a blob and a metadata entry (both replace an existing key). */
GCK_INTERNAL gck_status gck_snapshot_adopt_blob(gck_snapshot *s, gck_snap_blob *b);

/* Adds a 1-D tensor whose data stays owned by the caller (who keeps it
 * alive and unchanged for the snapshot's life): no copy of large values. */
GCK_INTERNAL gck_status gck_snapshot_add_borrowed(gck_snapshot *s, const char *name, gck_dtype dtype,
                                                  const void *data, size_t count);

/* Checks a tensor name: non-empty, <= GCK_NAME_MAX, not reserved. */
GCK_INTERNAL gck_status gck_check_tensor_name(const char *name);

#endif /* GCK_SNAPSHOT_INTERNAL_H */
