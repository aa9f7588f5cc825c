/* gradckpt/snapshot.h - training snapshots (tensors, step, optimizer state, metadata) as safetensors files. */
#ifndef GRADCKPT_SNAPSHOT_H
#define GRADCKPT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/checkpoint.h>
#include <gradckpt/dtype.h>
#include <gradckpt/export.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The state needed to resume a run: named tensors (any gck_dtype, with shape
 * and content id), the optimizer step, an optional loss content id,
 * optimizer-state blobs keyed by parameter name, a creation timestamp and a
 * string -> string map of user metadata. Not thread-safe while being
 * modified; concurrent readers of an unmodified snapshot are fine.
 */
typedef struct gck_snapshot gck_snapshot;

/** Reserved name prefix of optimizer blobs stored as U8 tensors. */
#define GCK_OPTIMIZER_PREFIX "__optimizer__/"
/** Prefix of gradckpt's own `__metadata__` keys; user keys may not use it. */
#define GCK_METADATA_PREFIX "gradckpt."
/** Longest tensor name, parameter name or metadata key accepted (bytes). */
#define GCK_NAME_MAX 4096
/** Most dimensions a tensor may have. */
#define GCK_MAX_DIMS 32

/**
 * Creates an empty snapshot at `step`, timestamped now (seconds).
 *
 * Ownership: *out is the caller's; free with gck_snapshot_destroy.
 * Errors: GCK_ERR_INVALID_ARGUMENT (out NULL), GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_snapshot_create(uint64_t step, gck_snapshot **out);

/** Frees a snapshot and everything it owns. NULL is fine. */
GCK_API void gck_snapshot_destroy(gck_snapshot *s);

/**
 * Adds a tensor: its bytes (prod(shape) * gck_dtype_size(dtype), in this
 * CPU's byte order) are copied and its content id computed. ndim may be 0
 * (a scalar: one element); shape may be NULL only when ndim is 0.
 *
 * Ownership: copies name, shape and data; keeps no reference.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL arguments, an empty or over-long
 *         name, a name that is "__metadata__" or starts with
 *         "__optimizer__/", a name already present, an unknown dtype, a
 *         negative dimension, more than GCK_MAX_DIMS dimensions, or a byte
 *         size that overflows; GCK_ERR_NO_MEMORY. The snapshot is unchanged
 *         on error.
 * Thread-safety: one writer.
 */
GCK_API gck_status gck_snapshot_add_tensor(gck_snapshot *s, const char *name, gck_dtype dtype,
                                           const int64_t *shape, size_t ndim, const void *data);

/** Sets (or replaces) the loss content id. Errors: INVALID_ARGUMENT (NULL), NO_MEMORY. */
GCK_API gck_status gck_snapshot_set_loss_cid(gck_snapshot *s, const char *cid);

/**
 * Sets (or replaces) the optimizer-state blob of parameter `param` (copied).
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL s/param, blob NULL with len > 0,
 *         an empty or over-long param; GCK_ERR_NO_MEMORY. Unchanged on error.
 */
GCK_API gck_status gck_snapshot_set_optimizer_state(gck_snapshot *s, const char *param, const void *blob,
                                                    size_t len);

/**
 * Sets (or replaces) a user metadata entry (both strings copied).
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL arguments, an empty or
 *         over-long key, or a key starting with "gradckpt."; GCK_ERR_NO_MEMORY.
 */
GCK_API gck_status gck_snapshot_set_metadata(gck_snapshot *s, const char *key, const char *value);

/** Sets the creation timestamp (seconds since the epoch). Errors: INVALID_ARGUMENT (NULL). */
GCK_API gck_status gck_snapshot_set_timestamp(gck_snapshot *s, uint64_t unix_secs);

/**
 * Writes the snapshot as a safetensors file, atomically and durably: a
 * temporary file in the target's directory (`.<name>.tmp.<pid>.<n>`, locked
 * while it is written: see gck_snapshot_sweep_temporaries), every byte
 * written, fsync, rename over `path`, fsync of the directory. Tensors are laid out as the
 * reference writer lays them out (by dtype, widest first, then by name; the
 * JSON header padded with spaces to a multiple of 8 bytes); our fields go
 * into `__metadata__` under "gradckpt." keys (format, step, timestamp, loss
 * cid, per-tensor content ids); optimizer blobs are U8 tensors named
 * "__optimizer__/<param>". Values are written little-endian on any CPU.
 *
 * Ownership: reads s; keeps no reference.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL); GCK_ERR_IO with the OS's reason
 *         (missing directory, permissions, disk full, ...): the target is
 *         then untouched and no temporary file is left — except when only
 *         the final fsync of the directory fails, where the new file is
 *         already in place (the message says so); GCK_ERR_NO_MEMORY.
 * Thread-safety: safe while nobody modifies s.
 */
GCK_API gck_status gck_snapshot_save(const gck_snapshot *s, const char *path);

/** What gck_snapshot_sweep_temporaries removed and kept. */
typedef struct gck_sweep_stats {
    size_t removed;       /**< temporary files removed */
    uint64_t bytes_freed; /**< their sizes in bytes */
    size_t live;          /**< kept: a live writer holds their lock */
    size_t young;         /**< kept: modified less than min_age_secs ago */
} gck_sweep_stats;

/**
 * Removes what interrupted saves left behind. Every save of this library
 * (gck_snapshot_save, gck_checkpoint_save, a store's data files and
 * manifest) writes `<dir>/.<name>.tmp.<pid>.<n>` (pid and n decimal)
 * next to its target `<dir>/<name>`, holds an exclusive flock(2) on it from
 * its creation until after it is renamed over the target, and removes it on
 * any error; only a writer that died (SIGKILL, power loss) leaves one.
 *
 * Removed: regular files in `dir` whose names have exactly that form, for
 * the target `name` (NULL: every target), whose lock nobody holds and that
 * were not modified in the last min_age_secs seconds (0: no age rule). Never
 * touched: any other name, symbolic links, directories, a file a live
 * writer holds locked, and files newer than min_age_secs - which also
 * protects writers on file systems without flock and of gradckpt versions
 * that took no lock (they modify the file as they write it).
 *
 * Ownership: out may be NULL.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL or empty dir, a name that is empty
 *         or contains '/'); GCK_ERR_IO (dir cannot be listed, or a file
 *         cannot be removed: the message names it; files removed before it
 *         stay removed and are counted in *out).
 * Thread-safety: safe from any thread and beside any number of writers.
 */
GCK_API gck_status gck_snapshot_sweep_temporaries(const char *dir, const char *name, uint64_t min_age_secs,
                                                  gck_sweep_stats *out);

/**
 * Reads and validates a safetensors file (ours or another writer's): header
 * length within the file and at most 100 MB, a UTF-8 JSON object, known
 * dtypes, non-negative integer shapes and offsets, offsets in order from 0,
 * contiguous and ending at the end of the file, element count x size equal
 * to the byte span (overflow-checked), no duplicate names, no tensor called
 * "__metadata__", string-only metadata, and our content ids when present.
 * Files without our keys load with step and timestamp 0 and their
 * `__metadata__` as user metadata.
 *
 * Ownership: *out is the caller's (gck_snapshot_destroy).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL); GCK_ERR_IO (cannot open/read);
 *         GCK_ERR_CORRUPT with the rule and the place that failed;
 *         GCK_ERR_UNSUPPORTED for a newer gradckpt format version, or a
 *         dtype newer safetensors versions define that gck_dtype lacks (F4,
 *         F6_E2M3, F6_E3M2, F8_E8M0, C64);
 *         GCK_ERR_NO_MEMORY. No allocation exceeds the file's size.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_snapshot_load(const char *path, gck_snapshot **out);

/**
 * gck_snapshot_load for large files, without copying the values: the file
 * is mapped read-only and tensor data points into the mapping (tensors whose
 * bytes are not aligned for their type, optimizer blobs, and every tensor on
 * a big-endian CPU are copied). Every structural rule of gck_snapshot_load
 * is checked. With verify = 0, content ids are taken from the file's
 * gradckpt.cid.* keys where present and the values are not read at load
 * time (pages come in as they are used); with verify = 1 every byte is
 * hashed and checked, as gck_snapshot_load does.
 *
 * Ownership: *out owns the mapping; it is unmapped by gck_snapshot_destroy.
 *            Changing or truncating the file while the snapshot is alive is
 *            undefined (as with any mapping; SIGBUS on truncation).
 * Errors: as gck_snapshot_load.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_snapshot_load_mmap(const char *path, int verify, gck_snapshot **out);

/** One tensor of a snapshot; pointers owned by the snapshot. */
typedef struct gck_tensor_info {
    const char *name;
    gck_dtype dtype;
    const int64_t *shape;
    size_t ndim;
    const void *data;       /**< this CPU's byte order */
    size_t nbytes;
    const char *content_id; /**< "xxh3:" + 16 hex digits of XXH3-64 over the little-endian bytes */
} gck_tensor_info;

/* Accessors; NULL s gives 0 / NULL. Borrowed pointers live as long as s. */
GCK_API uint64_t gck_snapshot_step(const gck_snapshot *s);
GCK_API uint64_t gck_snapshot_timestamp(const gck_snapshot *s);
GCK_API const char *gck_snapshot_loss_cid(const gck_snapshot *s); /**< NULL if unset */
GCK_API size_t gck_snapshot_num_tensors(const gck_snapshot *s);
/** Tensor i in name order. Errors: INVALID_ARGUMENT (NULL or index past the end). */
GCK_API gck_status gck_snapshot_tensor(const gck_snapshot *s, size_t i, gck_tensor_info *out);
/** Tensor by name. Errors: INVALID_ARGUMENT (NULL), NOT_FOUND. */
GCK_API gck_status gck_snapshot_find_tensor(const gck_snapshot *s, const char *name, gck_tensor_info *out);
GCK_API size_t gck_snapshot_num_optimizer_states(const gck_snapshot *s);
/** Blob i in parameter-name order. Errors: INVALID_ARGUMENT (NULL or index past the end). */
GCK_API gck_status gck_snapshot_optimizer_state(const gck_snapshot *s, size_t i, const char **param,
                                                const void **blob, size_t *len);
/** Blob by parameter name. Errors: INVALID_ARGUMENT (NULL), NOT_FOUND. */
GCK_API gck_status gck_snapshot_find_optimizer_state(const gck_snapshot *s, const char *param, const void **blob,
                                                     size_t *len);
/** User metadata value, or NULL if unset. */
GCK_API const char *gck_snapshot_metadata(const gck_snapshot *s, const char *key);
/** Number of user metadata entries, and entry i in key order (NULL past the end). */
GCK_API size_t gck_snapshot_num_metadata(const gck_snapshot *s);
GCK_API const char *gck_snapshot_metadata_key(const gck_snapshot *s, size_t i);

/**
 * Saves a checkpoint as a safetensors file (same atomic protocol as
 * gck_snapshot_save): one 1-D tensor per layer named by its id, the
 * checkpoint's step and created_at as the snapshot's step and timestamp, and
 * "gradckpt." keys for the id, the compressed size, the checksum (algorithm
 * and value) and every layer's step. The values are written from the
 * checkpoint's memory, not copied.
 *
 * Ownership: reads c; keeps no reference.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL arguments or a layer id that is
 *         "__metadata__" or starts with "__optimizer__/"; GCK_ERR_IO;
 *         GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread (checkpoints are immutable).
 */
GCK_API gck_status gck_checkpoint_save(const gck_checkpoint *c, const char *path);

/**
 * Loads a checkpoint written by gck_checkpoint_save: every snapshot rule,
 * then the checkpoint's own keys; layer norms and the global norm are
 * recomputed from the values and the stored checksum is verified with its
 * algorithm.
 *
 * Ownership: *out is a new reference the caller releases.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL); GCK_ERR_IO; GCK_ERR_CORRUPT (any
 *         snapshot rule, missing checkpoint keys, layers that are not 1-D
 *         F32/F64 of one dtype, a checksum mismatch); GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_checkpoint_load(const char *path, gck_checkpoint **out);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_SNAPSHOT_H */
