/* core/snapshot_internal.h - the snapshot's storage, shared by the object and its file I/O (internal). */
#ifndef GCK_SNAPSHOT_INTERNAL_H
#define GCK_SNAPSHOT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/snapshot.h>

#include "named_vec_internal.h"
#include "parse_internal.h"
#include "status_internal.h"

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
    int map_fd1;           /* the store's loads (load_whole, load_mmap_unhashed): the mapped
                              file's descriptor + 1, kept for gck_snapshot_read_mapped; 0: none */
    unsigned char *arena;  /* gck_snapshot_reserve: new tensors' data, one allocation */
    size_t arena_cap, arena_used;
};

/* Reserves one buffer for the data of tensors about to be added with
 * gck_snapshot_new_tensor (up to `bytes` in all): one allocation (huge pages
 * when large) instead of one per tensor, so filling them takes few page
 * faults. Only once per snapshot; NO_MEMORY leaves it without. */
GCK_INTERNAL gck_status gck_snapshot_reserve(gck_snapshot *s, size_t bytes);
/* nbytes (64-byte aligned) of the reserved buffer, or NULL when there is no
 * room; the memory stays the snapshot's (tensors using it are "borrowed"). */
GCK_INTERNAL void *gck_snapshot_arena_take(gck_snapshot *s, size_t nbytes);

/* Sets (or replaces) a "gradckpt." key other than the snapshot's own fields
 * (format, step, timestamp, loss_cid, cid.*); key includes the prefix. */
GCK_INTERNAL gck_status gck_snapshot_set_sysmeta(gck_snapshot *s, const char *key, const char *value);
GCK_INTERNAL const char *gck_snapshot_sysmeta(const gck_snapshot *s, const char *key);

/* "xxh3:%016llx" of XXH3-64 over the little-endian bytes of n values. */
GCK_INTERNAL void gck_content_id(const void *data, size_t n, gck_dtype dtype, char out[24]);

/* Below this many bytes in all, work spread over tensors (coding, decoding,
 * hashing) runs on one thread: starting an OpenMP team costs about what it
 * saves (store_delta.c, gck_code_threads). */
#define GCK_PARALLEL_MIN_BYTES ((size_t)256 << 10)

/* 1 when tensor t of s borrows memory s does not own: the caller's, or a
 * file mapping's; not s's own arena (gck_snapshot_reserve). */
GCK_INTERNAL int gck_snapshot_borrows_outside(const gck_snapshot *s, const gck_snap_tensor *t);
/* gck_snapshot_own (fn names the caller in errors), taking the buffers
 * from `spare` (may be NULL) where it owns one of a tensor's name and size;
 * the tensors of spare whose buffers are taken keep no data, so spare is
 * only fit for gck_snapshot_destroy afterwards. keep_arena: tensors in s's
 * own arena stay there (they move with s). On error s is unchanged. */
GCK_INTERNAL gck_status gck_snapshot_own_reusing(gck_snapshot *s, gck_snapshot *spare, int keep_arena,
                                                 const char *fn);

/* Takes ownership of a fully built tensor (name, shape, data already
 * allocated); validates the name against the snapshot. On error nothing is
 * taken. Used by gck_snapshot_add_tensor and by the loader. */
GCK_INTERNAL gck_status gck_snapshot_adopt_tensor(gck_snapshot *s, gck_snap_tensor *t);
GCK_INTERNAL void gck_snap_tensor_free(gck_snap_tensor *t);
/* Same for a blob and a metadata entry (both replace an existing key). */
GCK_INTERNAL gck_status gck_snapshot_adopt_blob(gck_snapshot *s, gck_snap_blob *b);

/* The out-of-memory failure of building a tensor named name (record, name,
 * ndim dimensions and data_bytes of its own values) or an optimizer state
 * (record, name, len bytes): gck_fail_oom with the object named. */
GCK_INTERNAL gck_status gck_tensor_oom(const char *name, size_t ndim, size_t data_bytes);
GCK_INTERNAL gck_status gck_blob_oom(const char *param, size_t len);

/* Adds a 1-D tensor whose data stays owned by the caller (who keeps it
 * alive and unchanged for the snapshot's life): no copy of large values. */
GCK_INTERNAL gck_status gck_snapshot_add_borrowed(gck_snapshot *s, const char *name, gck_dtype dtype,
                                                  const void *data, size_t count);
/* The same without a content id (left empty): the tensor's file records
 * none for it. For a store's coded payloads, whose integrity rests on the
 * ids of the tensors rebuilt from them (see gck_delta_write). */
GCK_INTERNAL gck_status gck_snapshot_add_unhashed(gck_snapshot *s, const char *name, gck_dtype dtype,
                                                  const void *data, size_t count);
/* gck_snapshot_load_mmap without verification, where a tensor whose file
 * records no content id gets an empty one instead of being hashed; the file
 * read without read-ahead (POSIX_FADV_RANDOM): the caller reads parts and
 * asks for each range it needs. The file stays open with the snapshot
 * (gck_snapshot_read_mapped); the store destroys it after its restore. */
GCK_INTERNAL gck_status gck_snapshot_load_mmap_unhashed(const char *path, gck_snapshot **out);
/* gck_snapshot_load_mmap for a caller that reads every byte (its pages are
 * mapped at once). verify 1 or 0 as there; -1 as
 * gck_snapshot_load_mmap_unhashed. The file stays open with the snapshot
 * (gck_snapshot_read_mapped) until gck_snapshot_close_file or destroy. */
GCK_INTERNAL gck_status gck_snapshot_load_whole(const char *path, int verify, gck_snapshot **out);
/* Copies n bytes at p, inside the mapping of a snapshot loaded with
 * gck_snapshot_load_whole or gck_snapshot_load_mmap_unhashed, into dst by
 * reading the file (pread) instead of through the mapping: 1 when done, 0
 * when it cannot be (no such mapping, p outside it, a failed read: the
 * caller reads the mapping instead). Safe on any number of threads at once.
 * A mapping whose bytes are all read so has no page tables to fill on first
 * touch nor to tear down at munmap. */
GCK_INTERNAL int gck_snapshot_read_mapped(const gck_snapshot *s, const void *p, size_t n, void *dst);
/* Closes the descriptor such a snapshot keeps (the mapping stays): done before such a snapshot is handed to a caller, who
 * may hold many (mappings count against no descriptor limit). */
GCK_INTERNAL void gck_snapshot_close_file(gck_snapshot *s);

/* Checks a tensor name: non-empty, <= GCK_NAME_MAX, not reserved. */
GCK_INTERNAL gck_status gck_check_tensor_name(const char *name);

/* Adds a tensor whose data (nbytes, 64-byte aligned, uninitialised) and
 * content id the caller fills in; *out points at it. Validates the name. */
GCK_INTERNAL gck_status gck_snapshot_new_tensor(gck_snapshot *s, const char *name, gck_dtype dtype,
                                                const int64_t *shape, size_t ndim, size_t nbytes,
                                                gck_snap_tensor **out);
/* Same for an optimizer blob (replacing one of that name). */
GCK_INTERNAL gck_status gck_snapshot_new_blob(gck_snapshot *s, const char *param, size_t len, gck_snap_blob **out);

/* Copies step, timestamp, loss cid, user metadata and "gradckpt." keys
 * (except skip_sysmeta, may be NULL) from src into dst. */
GCK_INTERNAL gck_status gck_snapshot_copy_fields(gck_snapshot *dst, const gck_snapshot *src,
                                                 const char *skip_sysmeta);

/* The same file written with gck_write_unsynced: under its final name, not
 * yet fsynced, *fd left open for the caller's commit to fsync and close (no
 * rename; the commit's directory fsync makes the name durable). On error no
 * file is left. */
GCK_INTERNAL gck_status gck_snapshot_write_unsynced(const gck_snapshot *s, const char *path, int *fd);

/* The first bytes of the file gck_snapshot_save would write for s - the
 * 8-byte length and the JSON header (data order: by dtype, then by name) -
 * with the JSON padded with spaces to exactly `room` bytes (a multiple of
 * 8), for a writer that streams the data first and writes the header last
 * (it must write the tensors in that order, starting at byte 8 + room).
 * *out (8 + room bytes, the caller frees it) stays NULL with room 0, which
 * only measures: *need is the JSON's length rounded up to 8. room
 * GCK_HEADER_FIT: room = *need (no padding beyond the 8-byte multiple).
 * GCK_ERR_INVALID_ARGUMENT when the JSON needs more than room. */
#define GCK_HEADER_FIT SIZE_MAX
GCK_INTERNAL gck_status gck_snapshot_header(const gck_snapshot *s, size_t room, char **out, size_t *need);

/* Copies src's values, ids and fields into dst when both hold the same
 * tensors and blobs (names, dtypes, shapes, sizes): no new buffers, so no
 * page faults. GCK_ERR_DIMENSION_MISMATCH (no message, dst untouched) when
 * they differ; any other error leaves dst's fields partly copied. */
GCK_INTERNAL gck_status gck_snapshot_overwrite(gck_snapshot *dst, const gck_snapshot *src);
/* 1 when gck_snapshot_overwrite(dst, src) would copy (dst owns buffers for
 * src's tensors and blobs, same names, dtypes, shapes, sizes, order). */
GCK_INTERNAL int gck_snapshot_same_layout(const gck_snapshot *dst, const gck_snapshot *src);
/* The part of gck_snapshot_overwrite after the values: ids and fields, for
 * a caller that has copied the values itself (same layout required). */
GCK_INTERNAL gck_status gck_snapshot_overwrite_ids(gck_snapshot *dst, const gck_snapshot *src);

/* gck_snapshot_clone (public, snapshot.h): deep copy, content ids included. */

/* ---- chosen tensors of a file, read straight into the caller's memory ---- */

/* One tensor of an opened file. */
typedef struct gck_st_entry {
    const char *name;   /* as in the file: blobs are "__optimizer__/<param>" */
    gck_dtype dtype;
    size_t nbytes;
    uint64_t offset;    /* of its first byte in the file */
    const char *cid;    /* the file's gradckpt.cid.<name>, or NULL */
    const int64_t *shape; /* ndim dimensions */
    size_t ndim;
} gck_st_entry;

/* A safetensors file whose header passed every structural rule of
 * gck_snapshot_load (and whose metadata was applied to a field-only
 * snapshot), with its values not read yet. */
typedef struct gck_st_file gck_st_file;

GCK_INTERNAL gck_status gck_st_open(const char *path, gck_st_file **out);
GCK_INTERNAL void gck_st_close(gck_st_file *f);
/* The tensor of that file name, or NULL. */
GCK_INTERNAL const gck_st_entry *gck_st_find(const gck_st_file *f, const char *name);
/* The file's step, timestamp, loss cid, user and "gradckpt." metadata as a
 * snapshot without tensors; the caller owns it (NULL after the first call). */
GCK_INTERNAL gck_snapshot *gck_st_take_fields(gck_st_file *f);
/* Reads the n tensors into dst[i] (exactly ents[i]->nbytes each, this CPU's
 * byte order), hashing each piece as it arrives, and checks each against
 * want[i] (want NULL or want[i] NULL: the file's recorded id, none when the
 * file records none). On OpenMP threads when large. IO or CORRUPT naming
 * the first failing tensor; dst contents are then unspecified. */
GCK_INTERNAL gck_status gck_st_read_into(const gck_st_file *f, const gck_st_entry *const *ents, void *const *dst,
                                         const char *const *want, size_t n);
/* Reads entry e's bytes as stored (little-endian) into dst, unhashed (a
 * caller that checks what it rebuilds from them), with pread: safe on any
 * number of threads at once. IO naming the file and tensor. */
GCK_INTERNAL gck_status gck_st_read_stored(const gck_st_file *f, const gck_st_entry *e, void *dst);

/* The argument rules of the *_into functions: names and sizes (and dsts)
 * non-NULL when n > 0, every name non-NULL and given once, dsts[i] NULL only
 * when sizes[i] is 0, no two destinations overlapping. */
GCK_INTERNAL gck_status gck_check_dsts(const char *fn, const char *const *names, void *const *dsts,
                                       const size_t *sizes, size_t n);

/* "xxh3:" + 16 hex digits over everything in s but the tensor and blob
 * values (which content ids cover): step, timestamp, loss cid, user
 * metadata, the other "gradckpt." keys but skip_sysmeta (may be NULL), each
 * tensor's name, dtype and shape, each blob's name and length. Equal
 * snapshots give equal digests on every CPU; the store records it per
 * version so a changed header field is found although every content id
 * still matches. */
GCK_INTERNAL void gck_snapshot_fields_digest(const gck_snapshot *s, const char *skip_sysmeta, char out[24]);

/* ---- pieces of the file format the sharded layout reuses (core/snapshot_sharded.c) ---- */

struct json_t;
/* gck_snapshot_save of only the items keep marks (tensors in name order,
 * then blobs; NULL: all): the file's gradckpt.cid.* keys name those only. */
GCK_INTERNAL gck_status gck_snapshot_save_subset(const gck_snapshot *s, const unsigned char *keep, const char *path);
/* s's __metadata__ object as a file of all its items would hold it (every
 * content id); a new reference, NULL when out of memory. */
GCK_INTERNAL struct json_t *gck_snapshot_metadata_json(const gck_snapshot *s);
/* Applies such an object to s as the loader does (CORRUPT naming path for a
 * malformed entry; gradckpt.cid.* keys are left to the caller). */
GCK_INTERNAL gck_status gck_snapshot_apply_metadata(const char *path, struct json_t *md, gck_snapshot *s);

#endif /* GCK_SNAPSHOT_INTERNAL_H */
